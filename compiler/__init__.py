"""vtalab.compiler"""
