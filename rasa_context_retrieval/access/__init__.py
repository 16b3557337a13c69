"""Access control: which documents a user may be answered from, decided by the channel.

Slots are what the user says (the LLM command generator, NLU entities and ``/SetSlots`` payloads
fill them), so they scope and personalise a search but cannot grant anything. Entitlements come
from channel metadata, which a connector fills: :mod:`access.channel` decides which
metadata can be trusted, :mod:`access.entitlements` turns it into an access filter that is
denied by default and that nothing can widen.
"""
