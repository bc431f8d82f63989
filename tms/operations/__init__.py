"""Operations: health, readiness, metrics, the offline API reference."""
