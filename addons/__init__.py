"""The example assistant's own code (Lumen Drive).

Like most Rasa projects, the assistant keeps its custom components in an ``addons`` package; the
retrieval engine itself is the installable ``rasa_context_retrieval`` distribution.
"""
