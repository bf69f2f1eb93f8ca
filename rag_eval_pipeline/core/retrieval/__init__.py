"""Retrieval as users run it: dense (Qdrant), keyword (BM25), weighted RRF, reranking, query rewriting."""
