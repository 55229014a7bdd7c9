"""Reports of evaluation results: tables (Markdown, CSV, JSON, LaTeX), plots, and run comparisons."""
