from node.cli.thin import main

main()
