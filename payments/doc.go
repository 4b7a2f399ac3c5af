// Package payments is the payment gateways area: payment sessions through
// a provider, capture, refund, cancel, status, and the providers' inbound
// webhooks.
package payments
