"""The model side: a model's spec, its meta template library, system role, special tokens and tokenizer."""
