"""How queries and chunks are embedded, as ``vector_store: query_embedder`` and
``document_precision`` name it.

Its own module so that ``config`` can name the choice without importing the embedding code.
"""

from typing import Literal

QueryEmbedderMode = Literal["auto", "int8", "rasa"]
"""``auto``: the checked fp32 ONNX export, else Rasa's client; ``int8``: the quantized export;
``rasa``: always Rasa's client."""

DocumentPrecision = Literal["auto", "fp32"]
"""``auto``: a large build on a CPU with native bfloat16 embeds its chunks in bfloat16 when a check
on its own chunks holds (``query_embedding.bf16``); ``fp32``: always float32."""
