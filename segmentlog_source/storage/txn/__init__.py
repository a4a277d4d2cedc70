"""Producer and transaction state: producer snapshots (ProducerStateManager) and the
transaction index of aborted transactions (TransactionIndex)."""
