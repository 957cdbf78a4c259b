"""The market a node runs: its chain connection, its rounds, and the services its commands call
(``MarketDesk``). The node's market part builds these and only starts, stops and wires them."""
