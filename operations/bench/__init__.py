"""Benchmarks (`manage.py bench crediting|payments`): each builds its data in a scratch database."""
