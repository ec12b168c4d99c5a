"""vtalab.hw"""
