"""Defines none of the exercise functions."""
