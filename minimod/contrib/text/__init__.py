"""`mx.contrib.text`: MXNet's text helpers for NLP data pipelines: `utils.count_tokens_from_str`
(token counts of a string), `vocab.Vocabulary` (tokens indexed by frequency, with an unknown
token at index 0 and reserved tokens after it) and `embedding` (pre-trained token vectors
indexed like a vocabulary: CustomEmbedding from any file, GloVe and FastText from their files
under `embedding_root`, CompositeEmbedding joining several for one vocabulary)."""
from . import embedding, utils, vocab

__all__ = ["embedding", "utils", "vocab"]
