//! Black-box tests: real PostgreSQL and RabbitMQ, nodes started in the test process and
//! driven over HTTP.

mod abuse;
mod analytics;
mod attachments;
mod broker;
mod browser;
mod cli;
mod cluster;
mod contract;
mod conventions;
mod door_list;
mod doors;
mod events;
mod fake_telegram;
mod faults;
mod gateway;
mod handovers;
mod identity;
mod installation;
mod jobs;
mod lifecycles;
mod media;
mod node;
mod notifications;
mod outbox;
mod payments;
mod registration_search;
mod registrations_export;
mod revocation;
mod scenario;
mod support;
mod tenancy;
mod ticketing;
mod web;
