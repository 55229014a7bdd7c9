"""Scoring benchmark items: scorer registry, the encoder MC scorer, metrics and the evaluate stage."""
