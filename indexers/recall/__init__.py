"""Recall: what should the assistant remember right now, and why (docs/RECALL.md)."""

from .pipeline import Candidate, RecallOptions, RecallResult, Stage, profile_weights, recall

__all__ = ["Candidate", "RecallOptions", "RecallResult", "Stage", "profile_weights", "recall"]
