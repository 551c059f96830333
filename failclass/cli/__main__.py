from failclass.cli.main import main

main()
