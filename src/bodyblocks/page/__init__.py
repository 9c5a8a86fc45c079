"""Page reading: bytes -> text -> DOM -> ordered text blocks, their features, metadata and Markdown."""
