from report import report


def test_report():
    assert report(1) == 'area=3.14'
