"""The specification's composition rules, pure: order, the byte cap, decoding, sections."""
