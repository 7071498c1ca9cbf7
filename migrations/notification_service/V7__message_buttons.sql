-- A message may carry one link button under its text (the "Pay" of a seat held for payment).
ALTER TABLE notification_service.messages ADD COLUMN button_text TEXT;
ALTER TABLE notification_service.messages ADD COLUMN button_url TEXT;
