"""Retrievers: which training rows become each test row's in-context examples."""
