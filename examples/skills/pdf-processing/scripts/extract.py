"""Print a PDF's text, page by page (needs pypdf)."""

import sys

from pypdf import PdfReader

for number, page in enumerate(PdfReader(sys.argv[1]).pages, 1):
    print(f"--- page {number}\n{page.extract_text()}")
