"""Context-aware retrieval for Rasa Pro's EnterpriseSearchPolicy.

The Rasa-facing shell is :class:`addons.custom_information_retrieval.MyVectorStore`; everything
else in this package is a small library (conversation → plan → retrieve → results) that imports
nothing from Rasa's policy machinery, so tests, the console and benchmarks drive it directly.
"""
