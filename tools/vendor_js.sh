#!/usr/bin/env bash
# Vendor the JavaScript the built book needs, so that pages load nothing from a CDN.
#   MathJax 3 (math), RequireJS and @jupyter-widgets/html-manager (static ipywidgets).
# Result: _vendor/vendor/{mathjax,require.js,html-manager}, copied into _build/html/vendor/
# by `html_extra_path: ["_vendor"]` in _config.yml. Safe to run again: it rebuilds from scratch.
set -euo pipefail

# name, version, file name of the npm tarball, its sha256 (pinned: the download is checked)
PACKAGES=(
    "mathjax 3.2.2 mathjax-3.2.2.tgz 1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09"
    "requirejs 2.3.8 requirejs-2.3.8.tgz 777158e89275e16bd51aec3ef714fbcb5dc45789e7078659933bc814916d7dec"
    "@jupyter-widgets/html-manager 1.0.6 jupyter-widgets-html-manager-1.0.6.tgz 6c198ceb99ba7e7526990a1de16e8147ad7d3a714e3fb06741183623c04b5f6e"
)
REGISTRY="${NPM_REGISTRY:-https://registry.npmjs.org}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/_vendor/vendor"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# Fetch each tarball with `npm pack`; without npm, download it from the registry with Python.
for entry in "${PACKAGES[@]}"; do
    read -r name version file sha <<<"$entry"
    if command -v npm >/dev/null 2>&1; then
        npm pack --silent "$name@$version" >/dev/null
    else
        python3 - "$REGISTRY/$name/-/${name##*/}-$version.tgz" "$file" <<'PY'
import shutil, sys, urllib.request
request = urllib.request.Request(sys.argv[1], headers={"User-Agent": "vendor_js.sh (python urllib)"})
with urllib.request.urlopen(request, timeout=120) as response, open(sys.argv[2], "wb") as out:
    shutil.copyfileobj(response, out)
PY
    fi
    echo "$sha  $file" | sha256sum --check --quiet -
done

for pkg in mathjax requirejs html-manager; do
    mkdir -p "x/$pkg"
done
tar -xzf mathjax-*.tgz -C x/mathjax
tar -xzf requirejs-*.tgz -C x/requirejs
tar -xzf jupyter-widgets-html-manager-*.tgz -C x/html-manager

out="$tmp/vendor"
mkdir -p "$out/mathjax/input/tex" "$out/mathjax/output/chtml/fonts" "$out/html-manager"

# MathJax: the combined component plus what it loads lazily (menu, a11y, TeX extensions, fonts).
mj=x/mathjax/package/es5
cp "$mj/tex-mml-chtml.js" "$out/mathjax/"
cp -r "$mj/ui" "$mj/a11y" "$out/mathjax/"
cp -r "$mj/input/tex/extensions" "$out/mathjax/input/tex/"
cp -r "$mj/output/chtml/fonts/woff-v2" "$out/mathjax/output/chtml/fonts/"
cp x/mathjax/package/LICENSE "$out/mathjax/LICENSE"

# RequireJS: a single file.
cp x/requirejs/package/require.js "$out/require.js"

# html-manager: the AMD bundle, its webpack chunks and fonts (no source maps).
hm=x/html-manager/package/dist
cp "$hm/embed-amd.js" "$hm"/*.embed.js "$out/html-manager/"
find "$hm" -maxdepth 1 -type f \( -name '*.woff' -o -name '*.woff2' -o -name '*.ttf' \
    -o -name '*.eot' -o -name '*.svg' \) -exec cp {} "$out/html-manager/" \;
cp x/html-manager/package/LICENSE "$out/html-manager/LICENSE" 2>/dev/null || true

# Our own MathJax 2 -> 3 adapter for the html-manager (see the file's header).
cp "$root/tools/mathjax_hub_shim.js" "$out/mathjax-hub-shim.js"
# Our own accessible names for slider handles (see the file's header).
cp "$root/tools/widget_a11y.js" "$out/widget-a11y.js"

# Replace the previous copy in one step, then mark it complete.
mkdir -p "$root/_vendor"
rm -rf "$dest"
mv "$out" "$dest"
touch "$dest/.stamp"
echo "vendor_js: $(du -sh "$dest" | cut -f1) in ${dest#"$root"/}"
