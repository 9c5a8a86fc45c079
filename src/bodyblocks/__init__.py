"""bodyblocks: find the body text of web pages by classifying their text blocks."""

__version__ = "0.1.0"
