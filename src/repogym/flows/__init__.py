"""Prefect flows: thin shells over :mod:`repogym.pipeline`."""
