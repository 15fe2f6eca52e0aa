-- Per-term document counts of the keyword index, read by recall's rare-term distillation.
CREATE VIRTUAL TABLE entries_fts_vocab USING fts5vocab(entries_fts, 'row');
