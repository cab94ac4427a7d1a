"""The BRP area of the books: Pension Plan figures (form and import), the benefit quote pages and its PDF."""
