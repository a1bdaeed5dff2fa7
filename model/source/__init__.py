"""Reading upstream SGLang source with `ast`: never imported, never executed as a module."""
