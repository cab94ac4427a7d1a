"""Services of the defined benefit plan: the Supplemental Benefit (benefit.py)."""
