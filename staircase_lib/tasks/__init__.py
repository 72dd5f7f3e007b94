"""Synthetic tasks with known structure: samples and exact probability signatures, one module per task."""
from .addition import AdditionTask
from .anchor import AnchorTask
from .base import Batch, conditional_table, count_table
from .staircase import MergedTask, StaircaseTask

__all__ = ["Batch", "count_table", "conditional_table", "StaircaseTask", "MergedTask", "AnchorTask", "AdditionTask"]
