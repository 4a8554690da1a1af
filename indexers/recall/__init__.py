"""Recall: what should the assistant remember right now, and why (docs/RECALL.md).

One pipeline (pipeline.py) over the modules of its stages: query.py (with timewindow.py),
candidates.py (with relevance.py), policy.py, score.py, selection.py and verdict.py. It reads
the index through the Protocol in interface.py; options.py holds the caller's options and what
recall reads from memdir.yaml.
"""

from .interface import RecallIndex
from .options import RecallOptions
from .pipeline import recall
from .result import Candidate, RecallResult, Stage, Trace

__all__ = ["Candidate", "RecallIndex", "RecallOptions", "RecallResult", "Stage", "Trace", "recall"]
