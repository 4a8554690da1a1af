"""Derived indexes: embeddings, affect, Tantivy, FAISS, checkpoints, recall scoring."""
