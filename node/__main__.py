from node.cli.main import main

main()
