"""The emit stage: record bytes, the output folder as one unit, file names and the manifest."""
