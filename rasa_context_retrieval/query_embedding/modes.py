"""How queries are embedded, as ``vector_store: query_embedder`` names it.

Its own module so that ``config`` can name the choice without importing the embedding code.
"""

from typing import Literal

QueryEmbedderMode = Literal["auto", "int8", "rasa"]
"""``auto``: the checked fp32 ONNX export, else Rasa's client; ``int8``: the quantized export;
``rasa``: always Rasa's client."""
