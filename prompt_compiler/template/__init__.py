"""Dataset templates: PromptTemplate, RawPromptTemplate, Jinja2 prompts and placeholder filling."""
