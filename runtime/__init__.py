"""vtalab.runtime"""
