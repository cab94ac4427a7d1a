"""The defined benefit plan (BRP): Pension Plan figures (form and import) with the Appendix A pre-2005 figure, the
Supplemental Benefit and its quote pages and PDF, the survivor benefits, Domestic Relations Orders (6.7). The payments
of a benefit are made by payments, which imports this app (never the reverse) and answers the pages through hooks."""
