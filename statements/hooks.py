"""What other code may attach to: `statement_issued` is sent once for every statement made.

    from statements.hooks import statement_issued
    statement_issued.connect(receiver)   # receiver(sender, statement, **kwargs)

It is sent after the transaction that stored the statement commits (so a receiver that queues an
email never announces a statement that was rolled back), once per statement: a rerun of a period that
finds the statement already made sends nothing. The email notice "statement available" connects here.
"""

from __future__ import annotations

from django.dispatch import Signal

statement_issued = Signal()  # sender=Statement, statement=<Statement>
