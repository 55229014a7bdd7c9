"""Fine-tuning a multiple-choice encoder (full or LoRA) with the Hugging Face Trainer: the "train" stage."""
