-- Paying through a provider, and giving money back through it.
--
-- An organization may take payments into its own shop: its provider keys are stored sealed
-- (XChaCha20-Poly1305 under PAYMENTS_CREDENTIALS_KEY, bound to the row's organization and
-- provider), and its checkouts remember whose shop took the money.
--
-- A checkout is one payment opened at a provider for a registration: at most one open at a
-- time, a new attempt (and a new idempotency key) after a decline. A refund is one
-- `refund.requested` on its way to the provider: requested → sent → succeeded | failed, sent
-- again under the same key until its answer is recorded.

CREATE TABLE event_service.checkouts (
    id                  UUID PRIMARY KEY,
    tenant_id           UUID NOT NULL,
    registration_id     UUID NOT NULL REFERENCES event_service.registrations (id),
    user_id             UUID NOT NULL,
    attempt             INTEGER NOT NULL CHECK (attempt > 0),
    provider            VARCHAR(20) NOT NULL CHECK (provider IN ('test', 'yookassa', 'stripe')),
    -- The organization whose own shop takes the money; NULL: the platform's.
    account_tenant_id   UUID,
    idempotency_key     TEXT NOT NULL UNIQUE,
    provider_payment_id TEXT UNIQUE,
    -- What a refund names at the provider when it is not the payment itself (Stripe's
    -- payment intent behind a checkout session).
    provider_charge_id  TEXT,
    status              VARCHAR(20) NOT NULL
                        CHECK (status IN ('CREATING', 'OPEN', 'PAID', 'DECLINED', 'CLOSED')),
    amount_cents        BIGINT NOT NULL CHECK (amount_cents > 0),
    currency            CHAR(3) NOT NULL,
    payment_url         TEXT,
    expires_at          TIMESTAMPTZ,
    -- Set when the reservation ended while the payment was open: the provider's payment is
    -- to be cancelled (where it allows) by the payments worker.
    cancel_due          BOOLEAN NOT NULL DEFAULT false,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    UNIQUE (registration_id, attempt)
);
CREATE UNIQUE INDEX checkouts_one_open ON event_service.checkouts (registration_id)
    WHERE status IN ('CREATING', 'OPEN');
CREATE INDEX checkouts_cancel_due ON event_service.checkouts (updated_at) WHERE cancel_due;
ALTER TABLE event_service.checkouts ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.checkouts FORCE ROW LEVEL SECURITY;
CREATE POLICY checkouts_tenant ON event_service.checkouts
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');
CREATE POLICY checkouts_self ON event_service.checkouts FOR SELECT
    USING (user_id = nullif(current_setting('app.user_id', true), '')::uuid);

CREATE TABLE event_service.refunds (
    id                  UUID PRIMARY KEY,
    tenant_id           UUID NOT NULL,
    registration_id     UUID NOT NULL REFERENCES event_service.registrations (id),
    event_id            UUID NOT NULL,
    user_id             UUID NOT NULL,
    -- The `refund.requested` event it executes: one refund per request, however often the
    -- event is delivered.
    request_id          UUID NOT NULL UNIQUE,
    checkout_id         UUID REFERENCES event_service.checkouts (id),
    provider            VARCHAR(20) CHECK (provider IN ('test', 'yookassa', 'stripe')),
    provider_refund_id  TEXT,
    amount_cents        BIGINT NOT NULL CHECK (amount_cents > 0),
    currency            CHAR(3) NOT NULL,
    reason              TEXT NOT NULL,
    status              VARCHAR(20) NOT NULL
                        CHECK (status IN ('REQUESTED', 'SENT', 'SUCCEEDED', 'FAILED')),
    sends               INTEGER NOT NULL DEFAULT 0,
    -- One more each time an operator retries a failed refund: the provider's idempotency key
    -- is the refund's id and this, since a provider replays a failed answer to the same key.
    generation          INTEGER NOT NULL DEFAULT 1,
    last_error          TEXT,
    -- When a SENT refund without an answer is sent again; NULL: due at once.
    next_attempt_at     TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    settled_at          TIMESTAMPTZ
);
CREATE INDEX refunds_due ON event_service.refunds (next_attempt_at) WHERE status IN ('REQUESTED', 'SENT');
CREATE INDEX refunds_registration ON event_service.refunds (registration_id);
CREATE INDEX refunds_event ON event_service.refunds (event_id, created_at);
ALTER TABLE event_service.refunds ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.refunds FORCE ROW LEVEL SECURITY;
CREATE POLICY refunds_tenant ON event_service.refunds
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');
CREATE POLICY refunds_self ON event_service.refunds FOR SELECT
    USING (user_id = nullif(current_setting('app.user_id', true), '')::uuid);

CREATE TABLE event_service.payment_accounts (
    tenant_id             UUID NOT NULL,
    provider              VARCHAR(20) NOT NULL CHECK (provider IN ('yookassa', 'stripe')),
    shop_id               TEXT NOT NULL DEFAULT '',
    secret_sealed         BYTEA NOT NULL,
    webhook_secret_sealed BYTEA,
    receipts              BOOLEAN NOT NULL DEFAULT false,
    updated_by            UUID NOT NULL,
    updated_at            TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, provider)
);
ALTER TABLE event_service.payment_accounts ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.payment_accounts FORCE ROW LEVEL SECURITY;
CREATE POLICY payment_accounts_tenant ON event_service.payment_accounts
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');
