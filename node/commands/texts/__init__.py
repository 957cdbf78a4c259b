"""How a person reads each command's answer on the command line (``CliSpec.render``): pure text
from the answer, the request and, when a line names a file, the node's paths."""
