"""Models, tokenizers and multiple-choice features."""
