"""HTTP API integrations' parameter mapping merged on update, as AWS does (apigatewayv2_mapping.py)."""


def test_an_update_merges_mappings_and_removes_by_empty_values(emulator):
    gw = emulator.client("apigatewayv2")
    api = gw.create_api(Name="mapped", ProtocolType="HTTP")["ApiId"]
    integration = gw.create_integration(
        ApiId=api,
        IntegrationType="HTTP_PROXY",
        IntegrationUri="https://example.com",
        IntegrationMethod="GET",
        PayloadFormatVersion="1.0",
        RequestParameters={"overwrite:header.a": "1", "append:querystring.q": "x"},
        ResponseParameters={"200": {"overwrite:header.r": "ok"}, "404": {"overwrite:statuscode": "200"}},
    )["IntegrationId"]
    gw.update_integration(
        ApiId=api,
        IntegrationId=integration,
        RequestParameters={"overwrite:header.b": "2", "append:querystring.q": ""},
        ResponseParameters={"404": {}, "500": {"overwrite:header.e": "yes"}},
    )
    live = gw.get_integration(ApiId=api, IntegrationId=integration)
    # Merged: what the update did not name stays; an empty value or map removes.
    assert live["RequestParameters"] == {"overwrite:header.a": "1", "overwrite:header.b": "2"}
    assert live["ResponseParameters"] == {
        "200": {"overwrite:header.r": "ok"},
        "500": {"overwrite:header.e": "yes"},
    }
    # An update that names neither map leaves both as they are.
    gw.update_integration(ApiId=api, IntegrationId=integration, Description="d")
    again = gw.get_integration(ApiId=api, IntegrationId=integration)
    assert again["RequestParameters"] == live["RequestParameters"]
    assert again["ResponseParameters"] == live["ResponseParameters"]
