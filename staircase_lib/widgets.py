"""Interactive explorers: live ipywidgets controls in Jupyter/Colab, a static default view when headless."""
from __future__ import annotations

import inspect
from typing import Any, Callable

from .runtime import is_headless

__all__ = ["default_value", "explore"]


def default_value(control: Any, parameter_default: Any = inspect.Parameter.empty) -> Any:
    """The value ``ipywidgets.interact`` would start a control at.

    Precedence: the function's own default; a widget's ``.value``; the first option of a list;
    the midpoint of a ``(min, max[, step])`` tuple (an int for int tuples); else the value itself.
    """
    if parameter_default is not inspect.Parameter.empty:
        return parameter_default
    if hasattr(control, "value") and hasattr(control, "observe"):
        return control.value
    if isinstance(control, list) and control:
        first = control[0]
        return first[1] if isinstance(first, tuple) and len(first) == 2 else first
    if isinstance(control, dict) and control:
        return next(iter(control.values()))
    if isinstance(control, tuple) and len(control) in (2, 3) and all(isinstance(v, (int, float)) for v in control):
        low, high = control[0], control[1]
        middle = (low + high) / 2
        return int(middle) if all(isinstance(v, int) for v in control) else middle
    return control


def explore(function: Callable[..., Any], static: bool | None = None, **controls: Any) -> Any:
    """Show ``function`` with controls, like ``ipywidgets.interact(function, **controls)``.

    With a live kernel (Jupyter, Colab) the controls are real widgets. Headless (the book build,
    nbval, scripts; or ``static=True``) the function runs once at its default setting, so the page
    shows a real figure instead of an empty widget. Returns the function's result when static, else None
    (so the cell does not echo anything after the live widget).
    """
    if not callable(function):
        raise TypeError(f"function must be callable, got {type(function).__name__}")
    signature = inspect.signature(function)
    unknown = [name for name in controls if name not in signature.parameters]
    if unknown:
        raise ValueError(f"controls {unknown} are not parameters of {function.__name__}{signature}")
    if static is None:
        static = is_headless()
    if static:
        kwargs = {name: default_value(control, signature.parameters[name].default)
                  for name, control in controls.items()}
        setting = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        print(f"Static view at the default setting ({setting}). Run the notebook in Jupyter or Colab to use the controls.")
        return function(**kwargs)
    import ipywidgets
    from IPython.display import display

    display(ipywidgets.interactive(function, **controls))
    return None
