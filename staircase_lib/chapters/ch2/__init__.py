"""Chapter 2's wing: ``claims``: its claims (one predicate per claim); ``page``: its page (what it measures, one call
per experiment); ``exercises``: its exercise checks. The shared bases they build on stay in ``staircase_lib``."""
from . import claims, page, exercises

__all__ = ["claims", "page", "exercises"]
