"""Looking at compiled prompts: diff, HTML report, viewer, lint, spans, chat-template checks."""
