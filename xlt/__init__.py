"""xlt: cross-lingual transfer for multilingual encoders on multiple-choice reading comprehension."""

__version__ = "0.1.0"
