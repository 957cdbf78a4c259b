"""The ground floor: what every package shares (the trio bridge, the clock, field parsers for
untrusted documents, rate limits and the error base). It imports nothing of ours, and every
package may import it."""
