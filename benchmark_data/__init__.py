"""Settings registry, generation pipeline and frozen artifacts of the benchmark."""
