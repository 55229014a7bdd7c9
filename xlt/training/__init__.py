"""Fine-tuning a multiple-choice encoder (full or LoRA) with the Hugging Face Trainer, for the train stage
(:mod:`xlt.stages.train`, which sequences set-up, training, saving and clean-up): the training data, the
``TrainingArguments``, the Trainer and its callbacks, complete checkpoints and resume, LoRA, the model card."""
