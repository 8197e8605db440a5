"""Stand-in: the real module defines StructuredOutputManager, whose
grammar_bitmask() the vLLM tests reproduce."""
