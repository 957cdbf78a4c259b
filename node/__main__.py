from node.cli import main

main()
