"""Chapter 3's wing: ``claims``: its claims (one predicate per claim); ``recordings``: its recorders (the long runs
behind its shipped results); ``page``: its page (what it measures, one call per experiment); ``exercises``: its
exercise checks. The shared bases they build on stay in ``staircase_lib``."""
from . import claims, recordings, page, exercises

__all__ = ["claims", "recordings", "page", "exercises"]
