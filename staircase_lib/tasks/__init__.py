"""Synthetic tasks with known structure: samples and exact probability signatures, one module per task."""
from .addition import AdditionTask
from .anchor import AnchorTask
from .base import Batch
from .staircase import MergedTask, StaircaseTask

__all__ = ["Batch", "StaircaseTask", "MergedTask", "AnchorTask", "AdditionTask"]
